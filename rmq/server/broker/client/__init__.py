"""The broker's view of its clients: connected producers and consumers, orderly consumers' queue
locks (Apache's broker.client).
"""
