"""The EXAMPLES section of every man page: command lines a user can run, with what they do.

`EXAMPLES` maps a page name (`rmq-topic-create`: the command path joined with dashes) to its
examples, each a command line and one sentence.  A command line is what one types in a shell;
its part before any `|`, `>` or `<` is an `rmq` command line that a test parses against the
live command tree (every option must exist), and a test fails when a visible command has no
examples here.  A page absent from the tree (a command not registered) is left out.
Names used throughout: topic Orders, group OrderConsumers, broker broker-a at
127.0.0.1:10911, the name server at 127.0.0.1:9876.
"""

from __future__ import annotations

from typing import Final

Example = tuple[str, str]

_MSG_ID: Final = "7F00000100002A9F0000000000000000"
_UNIQ: Final = "7F0000017A2C18B4AAC26E3B5A3D0000"

EXAMPLES: Final[dict[str, tuple[Example, ...]]] = {
    "rmq": (
        ("rmq standalone", "Start a name server and a broker on 127.0.0.1 for local work."),
        (
            'echo \'{"body":"hello"}\' | rmq produce Orders',
            "Send one message (the topic is created on first use).",
        ),
        ("rmq consume Orders -e", "Print every message of Orders as NDJSON and exit."),
        ("rmq --profile prod topic list", "List the topics of the cluster of profile prod."),
    ),
    "rmq-namesrv": (
        ("rmq namesrv", "Start a name server on port 9876."),
        ("rmq namesrv -c namesrv.conf --port 9877", "Start one from a config file, on 9877."),
    ),
    "rmq-broker": (
        ("rmq broker -n 127.0.0.1:9876", "Start a broker (port 10911) registering there."),
        ("rmq broker -c broker.conf", "Start a broker from Apache's broker.conf format."),
        ("rmq broker -c broker.conf -m", "Print the important settings of that file and exit."),
    ),
    "rmq-standalone": (
        ("rmq standalone", "A name server and a broker on 127.0.0.1, store in ~/store."),
        ("rmq standalone --store /tmp/rmq-store --host 0.0.0.0", "Listen on every address."),
    ),
    "rmq-produce": (
        ('echo \'{"body":"paid","keys":["order-1"]}\' | rmq produce Orders', "Send one record."),
        ("seq 1000 | rmq produce Orders -f lines --tags TagA", "Send 1000 text lines tagged TagA."),
        ("rmq consume Orders -e | rmq produce OrdersCopy", "Copy a topic's messages."),
    ),
    "rmq-consume": (
        ("rmq consume Orders -e", "Every message, as NDJSON message records; exit at the end."),
        ("rmq consume Orders --from @-1h -e", "What was stored in the last hour."),
        ("rmq consume Orders -g OrderConsumers -c 100", "100 messages as group OrderConsumers."),
        ("rmq consume Orders -e -f '%-10g %6S %.40v\\n'", "Tag, body size and body start."),
        ("rmq consume Orders --filter 'TagA || TagB' -e > orders.ndjson", "Save two tags."),
    ),
    "rmq-request": (
        ("rmq request Prices '{\"item\":42}'", "Send one request and print the reply."),
    ),
    "rmq-reply": (
        ("rmq reply Prices --exec 'jq -c .body'", "Answer each request with jq's output."),
    ),
    "rmq-bench": (
        ("rmq bench produce -t BenchTopic -d 30", "Send for 30 s and report TPS and RT."),
    ),
    "rmq-bench-produce": (
        ("rmq bench produce -t BenchTopic -s 1024 -w 16 -d 60", "1 KiB messages, 16 senders."),
        ("rmq bench produce -t BenchTopic --rate 5000 -c 100000", "100000 at 5000 a second."),
    ),
    "rmq-bench-consume": (
        ("rmq bench consume -t BenchTopic -g bench --from first -d 60", "Consume for 60 s."),
    ),
    "rmq-topic": (
        ("rmq topic list", "List the topics."),
        ("rmq topic create Orders -r 4 -w 4", "Create a topic with 4 queues."),
    ),
    "rmq-topic-update": (
        ("rmq topic update Orders -r 8 -w 8 --cluster DefaultCluster", "Grow it to 8 queues."),
        ("rmq topic update Orders --order --dry-run", "Show the requests of an ordered topic."),
    ),
    "rmq-topic-create": (
        ("rmq topic create Orders -r 4 -w 4", "Create Orders; fails if it exists."),
    ),
    "rmq-topic-delete": (("rmq topic delete Orders --yes", "Delete Orders without asking."),),
    "rmq-topic-list": (
        ("rmq topic list -o json", "The topics and their clusters, as JSON."),
        ("rmq topic list --all", "System topics included."),
    ),
    "rmq-topic-route": (("rmq topic route Orders", "The brokers and queues of Orders."),),
    "rmq-topic-status": (("rmq topic status Orders -o json", "Min and max offsets per queue."),),
    "rmq-topic-describe": (
        ("rmq topic describe Orders", "The route and the queues' offsets of Orders together."),
    ),
    "rmq-topic-clusters": (("rmq topic clusters Orders", "The clusters serving Orders."),),
    "rmq-topic-perm": (("rmq topic perm Orders R", "Make Orders read-only."),),
    "rmq-topic-allocate": (
        ("rmq topic allocate Orders --ip 10.0.0.1,10.0.0.2", "How two consumers share it."),
    ),
    "rmq-topic-stats": (
        ("rmq topic stats Orders", "Put and get rates and backlog of Orders."),
        ("rmq topic stats -o json", "The same for every topic."),
    ),
    "rmq-cluster": (("rmq cluster list", "The brokers with their figures."),),
    "rmq-cluster-list": (("rmq cluster list -o wide", "Every broker, all columns."),),
    "rmq-cluster-up": (
        ("rmq cluster up 2m-2s-async --dir /tmp/2m2s", "Two masters, two async slaves."),
        ("rmq cluster up 2m-2s-sync --dry-run", "Show the processes and their settings."),
        ("rmq cluster up dledger", "One DLedger group of three that elects its master."),
    ),
    "rmq-cluster-broker-status": (
        ("rmq cluster broker-status --broker 127.0.0.1:10911", "One broker's runtime figures."),
    ),
    "rmq-cluster-rt": (("rmq cluster rt --amount 20 --size 128", "Send RT of every broker."),),
    "rmq-cluster-consume-stats": (
        ("rmq cluster consume-stats -o json", "Every group's progress, as JSON."),
    ),
    "rmq-cluster-clean-expired-cq": (
        ("rmq cluster clean-expired-cq --yes", "Delete expired consume queues everywhere."),
    ),
    "rmq-cluster-clean-unused-topic": (
        ("rmq cluster clean-unused-topic --broker 127.0.0.1:10911 --yes", "On one broker."),
    ),
    "rmq-cluster-delete-expired-commitlog": (
        ("rmq cluster delete-expired-commitlog --dry-run", "Show the requests it would send."),
    ),
    "rmq-cluster-write-perm": (
        ("rmq cluster write-perm wipe broker-a --yes", "Stop writes to broker-a."),
    ),
    "rmq-cluster-write-perm-wipe": (
        ("rmq cluster write-perm wipe broker-a --yes", "Take broker-a's write permission away."),
    ),
    "rmq-cluster-write-perm-add": (
        ("rmq cluster write-perm add broker-a", "Give broker-a its write permission back."),
    ),
    "rmq-cluster-leader": (
        ("rmq cluster leader transfer broker-a --to n1", "Make node n1 lead broker-a."),
    ),
    "rmq-cluster-leader-transfer": (
        ("rmq cluster leader transfer broker-a --to n1", "Make n1 the master of broker-a."),
        ("rmq cluster leader transfer broker-a --to n2 --dry-run", "Show the request only."),
    ),
    "rmq-group": (("rmq group list", "The subscription groups."),),
    "rmq-group-list": (("rmq group list -o json", "Every group with its members, as JSON."),),
    "rmq-group-describe": (
        ("rmq group describe OrderConsumers", "Members, offsets and lag per queue."),
    ),
    "rmq-group-connections": (
        ("rmq group connections OrderConsumers -o json", "The online members' connections."),
    ),
    "rmq-group-update": (
        ("rmq group update OrderConsumers --retry-max-times 5", "Retry five times at most."),
    ),
    "rmq-group-delete": (("rmq group delete OrderConsumers --yes", "Delete the group."),),
    "rmq-group-reset-offsets": (
        ("rmq group reset-offsets OrderConsumers -t Orders --to first --yes", "Start over."),
        ("rmq group reset-offsets OrderConsumers -t Orders --to @-1h --yes", "Replay an hour."),
    ),
    "rmq-group-clone-offsets": (
        ("rmq group clone-offsets OrderConsumers NewConsumers -t Orders", "Copy offsets."),
    ),
    "rmq-producer": (("rmq producer list", "The connected producers."),),
    "rmq-producer-list": (("rmq producer list -o wide", "Producers by group, all columns."),),
    "rmq-monitor": (
        ("rmq monitor --interval 30", "Every group's lag every 30 s."),
        ("rmq monitor --rounds 1 -o json", "One round, as JSON."),
    ),
    "rmq-exporter": (
        ("rmq exporter", "Serve /metrics on 127.0.0.1:5557, collected every minute."),
        (
            "rmq exporter -n 127.0.0.1:9876 --port 9100 --interval 15s",
            "Serve on port 9100, collecting every 15 s.",
        ),
        (
            "rmq exporter --host 0.0.0.0 --expire-after 5m",
            "Listen on every address; keep a series 5 minutes after its last report.",
        ),
    ),
    "rmq-console": (
        ("rmq console", "Serve the console on http://127.0.0.1:8080/."),
        (
            "rmq console -n 127.0.0.1:9876 --port 9000 --interval 10s",
            "Serve on port 9000, charting TPS every 10 s.",
        ),
        (
            "rmq console --users ~/.config/rmq/console-users.json --host 10.0.0.5",
            "Serve on a LAN address; every page asks for a login.",
        ),
    ),
    "rmq-console-user": (
        ("rmq console user add alice --role admin", "Add an admin (asks the password)."),
    ),
    "rmq-console-user-add": (
        ("rmq console user add alice --role admin", "Add an admin; the password is asked twice."),
        (
            "printf '%s\\n' \"$PW\" | rmq console user add bob --password-stdin",
            "Add a viewer with the password from stdin.",
        ),
    ),
    "rmq-console-user-delete": (
        ("rmq console user delete bob", "Delete bob; his sessions end at their next request."),
    ),
    "rmq-console-user-list": (("rmq console user list -o json", "Each account's name and role."),),
    "rmq-message": (("rmq message by-key Orders order-1", "Find messages by key."),),
    "rmq-message-get": (
        (f"rmq message get {_MSG_ID} -o json", "The message an offset message id names."),
        (f"rmq message get {_UNIQ}", "The message with this msgId, looked up in every topic."),
    ),
    "rmq-message-by-key": (
        ("rmq message by-key Orders order-1", "The messages of Orders with key order-1."),
    ),
    "rmq-message-by-unique-key": (
        (f"rmq message by-unique-key Orders {_UNIQ}", "The message with this msgId."),
    ),
    "rmq-message-by-offset": (
        (
            "rmq message by-offset Orders --broker broker-a --queue 0 --offset 5",
            "The message at offset 5 of queue 0.",
        ),
    ),
    "rmq-message-resend": ((f"rmq message resend {_MSG_ID}", "Send a stored message again."),),
    "rmq-message-consume-directly": (
        (
            f"rmq message consume-directly {_MSG_ID} -g OrderConsumers",
            "Have a member of OrderConsumers consume it now.",
        ),
    ),
    "rmq-message-send-status": (
        ("rmq message send-status broker-a --count 10", "Ten probe sends to broker-a."),
    ),
    "rmq-message-trace": (
        (f"rmq message trace {_UNIQ} -o json", "The trace records of a message."),
    ),
    "rmq-broker-config": (("rmq broker-config get --broker 127.0.0.1:10911", "Its settings."),),
    "rmq-broker-config-get": (
        ("rmq broker-config get --broker 127.0.0.1:10911", "One broker's settings."),
    ),
    "rmq-broker-config-set": (
        ("rmq broker-config set flushIntervalConsumeQueue 1000", "Change it on every broker."),
    ),
    "rmq-namesrv-config": (("rmq namesrv-config get", "The name servers' settings."),),
    "rmq-namesrv-config-get": (("rmq namesrv-config get -o json", "As JSON."),),
    "rmq-namesrv-config-set": (
        ("rmq namesrv-config set orderMessageEnable true", "Turn ordered messages on."),
    ),
    "rmq-kv": (("rmq kv list ORDER_TOPIC_CONFIG", "The keys of a namespace."),),
    "rmq-kv-list": (("rmq kv list ORDER_TOPIC_CONFIG -o json", "Keys and values, as JSON."),),
    "rmq-kv-set": (
        ("rmq kv set ORDER_TOPIC_CONFIG Orders broker-a:4", "Order Orders on broker-a."),
    ),
    "rmq-kv-delete": (("rmq kv delete ORDER_TOPIC_CONFIG Orders --yes", "Delete that key."),),
    "rmq-acl": (("rmq acl list", "The ACL files of each broker master."),),
    "rmq-acl-list": (
        ("rmq acl list -o json", "The accounts and their permissions, as JSON."),
        ("rmq acl list --versions", "The ACL files and their versions."),
    ),
    "rmq-acl-set": (
        ("rmq acl set alice --secret 12345678 --admin", "Create admin account alice."),
    ),
    "rmq-acl-delete": (("rmq acl delete alice --yes", "Delete account alice."),),
    "rmq-acl-whitelist": (
        ("rmq acl whitelist '10.0.0.*,192.168.1.1'", "Set the global white addresses."),
    ),
    "rmq-mqadmin": (
        ("rmq mqadmin clusterList -n 127.0.0.1:9876", "mqadmin's clusterList, same output."),
        ("rmq mqadmin topicList", "mqadmin's topicList."),
    ),
    "rmq-inspect": (
        ("rmq inspect ~/store", "The interactive shell over a store directory."),
        ("rmq inspect ~/store verify", "Check every record of the store."),
    ),
    "rmq-inspect-overview": (("rmq inspect ~/store overview", "What the store holds."),),
    "rmq-inspect-files": (("rmq inspect ~/store files commitlog", "The commitlog's files."),),
    "rmq-inspect-checkpoint": (("rmq inspect ~/store checkpoint", "Decode the checkpoint."),),
    "rmq-inspect-dump": (("rmq inspect ~/store dump 0 -c 3", "The first three records."),),
    "rmq-inspect-queue": (
        ("rmq inspect ~/store queue Orders 0 -c 10", "The first ten entries of queue 0."),
    ),
    "rmq-inspect-by-id": ((f"rmq inspect ~/store by-id {_MSG_ID}", "A message by its id."),),
    "rmq-inspect-by-key": (
        ("rmq inspect ~/store by-key order-1 -t Orders", "Messages with key order-1."),
    ),
    "rmq-inspect-by-unique-key": (
        (f"rmq inspect ~/store by-unique-key {_UNIQ}", "The message with this msgId."),
    ),
    "rmq-inspect-search": (
        ("rmq inspect ~/store search --begin @-1h -t Orders", "Orders of the last hour."),
    ),
    "rmq-inspect-export": (
        ("rmq inspect ~/store export -t Orders --out orders.ndjson", "Export a topic."),
    ),
    "rmq-inspect-stats": (("rmq inspect ~/store stats -t Orders", "Records and bytes per queue."),),
    "rmq-inspect-verify": (("rmq inspect ~/store verify -o json", "Check it all, as JSON."),),
    "rmq-inspect-recovery": (("rmq inspect ~/store recovery", "What recoveries skipped."),),
    "rmq-inspect-config": (("rmq inspect ~/store config topics", "The topics config file."),),
    "rmq-inspect-config-diff": (
        ("rmq inspect ~/store config-diff --against /backup/store", "Compare two stores."),
    ),
    "rmq-spark-export": (
        ("rmq spark-export ~/store --out /tmp/orders --format json", "A store to JSON files."),
        (
            "rmq spark-export -n 127.0.0.1:9876 -t Orders --out /tmp/orders --since -1d",
            "A day of Orders from a running cluster, as Parquet.",
        ),
    ),
    "rmq-profile": (("rmq profile list", "The profiles."),),
    "rmq-profile-list": (("rmq profile list", "The profiles; ACTIVE marks the one in use."),),
    "rmq-profile-show": (("rmq profile show prod", "The settings profile prod gives."),),
    "rmq-profile-use": (("rmq profile use prod", "Make prod the active profile."),),
    "rmq-profile-set": (("rmq profile set prod -n 10.0.0.1:9876", "Create or change prod."),),
    "rmq-profile-delete": (("rmq profile delete prod --yes", "Delete profile prod."),),
    "rmq-completion": (
        ("rmq completion bash > ~/.local/share/bash-completion/completions/rmq", "Install."),
        ('rmq completion zsh > "${fpath[1]}/_rmq"', "Install zsh's."),
    ),
}
