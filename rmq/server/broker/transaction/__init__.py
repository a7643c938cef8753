"""Transactional messages: ending them and checking back with producers (Apache's
broker.transaction).
"""
