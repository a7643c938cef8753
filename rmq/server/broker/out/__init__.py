"""What the broker sends out on its own: registration with the name servers (Apache's
broker.out)."""
