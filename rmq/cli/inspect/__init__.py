"""`rmq inspect STORE_DIR`: offline, read-only forensics on a broker's store directory.

`group` holds the click group and what its commands share (options, opening the store,
damage warnings); the commands live by subject in `overview`, `records`, `lookups`, `scans`
and `config`, and `commands` assembles them (thin: the answers come from
`rmq.store.offline`).  `views` turns store results into rows for the one renderer (times,
body previews, hex dumps, progress bars), `filerows` and `configrows` build the rows of the
file listings and config views, and `repl` is the interactive shell that
`rmq inspect STORE_DIR` opens when no command is given.
"""
