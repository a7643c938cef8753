"""The broker: the store behind the remoting server.

Grouped as Apache's broker module is: :mod:`.controller` wires everything, :mod:`.context` is
what the processors work with, :mod:`.configmanager` loads and persists the metadata files;
``processor/`` holds one module per request concern, ``client/`` the connected clients and queue
locks, ``offset/``, ``topic/`` and ``subscription/`` the metadata tables, ``longpolling/``,
``transaction/``, ``filter/``, ``schedule/``, ``slave/``, ``out/`` (registration), ``stats/``,
``acl/`` and ``ha/`` the services.
"""
