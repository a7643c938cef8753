"""`rmq inspect STORE_DIR`: offline, read-only forensics on a broker's store directory.

`commands` holds the click group and its commands (thin: the answers come from
`rmq.store.inspect` and `rmq.store.reader`), `views` turns store results into rows for the
one renderer (times, body previews, hex dumps, progress bars), and `repl` is the interactive
shell that `rmq inspect STORE_DIR` opens when no command is given.
"""
