"""KV config admin operations of the friendly commands that mqadmin has no command for.

* `kv_list`: GET_KVLIST_BY_NAMESPACE (219) to the name servers in turn (the first that
  answers wins, as the admin client asks for routes): every key of one namespace and its
  value, an empty map when the name server has none (QUERY_NOT_FOUND).
"""

from __future__ import annotations

from rmq.client.admin import AdminClient
from rmq.client.errors import MQClientError
from rmq.remoting.bodies.route import KVTable
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.headers import GetKVListByNamespaceRequestHeader


async def kv_list(admin: AdminClient, namespace: str) -> dict[str, str]:
    """The KV config of `namespace` (sorted by key); {} when the namespace is empty."""
    remoting = admin.remoting

    async def ask(addr: str) -> dict[str, str]:
        header = GetKVListByNamespaceRequestHeader(namespace=namespace)
        request = create_request(RequestCode.GET_KVLIST_BY_NAMESPACE, header)
        response = await remoting.invoke(addr, request, admin.timeout)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return {}
        if response.code != ResponseCode.SUCCESS:
            raise MQClientError(response.code, response.remark or "")
        table = KVTable.decode(response.body or b"{}").table
        return dict(sorted(table.items()))

    return await admin._ask_namesrv(ask)
