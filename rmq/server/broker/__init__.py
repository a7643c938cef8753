"""The broker: the store behind the remoting server."""
