"""Plain ACL on the broker (Apache 4.9.8's acl module): files, accounts, checks, admin requests."""
