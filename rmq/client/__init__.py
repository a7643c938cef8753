"""rmq's client: producer, consumer, admin API."""
