"""The credentials `rmq mqadmin` signs with: mqadmin's `conf/tools.yml`, else rmq's own.

Apache's `MQAdminStartup` hands every command `AclUtils.getAclRPCHook(ROCKETMQ_HOME +
"/conf/tools.yml")`: when that YAML file exists and has a non-blank `accessKey` and
`secretKey`, every request of the command is signed with them; a missing, unreadable or
malformed file, or a blank key, means no signing (mqadmin only logs it).  `rmq mqadmin` reads
the same file under `$ROCKETMQ_HOME`.  When it gives no credentials, rmq's usual sources
apply (`RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY`, then the active profile: `rmq.cli.credentials`),
since `rmq mqadmin` takes no `--access-key` option of its own (its options are mqadmin's).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rmq.cli.credentials import apply_credentials

log = logging.getLogger(__name__)

TOOLS_FILE = Path("conf") / "tools.yml"
ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"


def tools_keys(rocketmq_home: str | None) -> tuple[str, str] | None:
    """(accessKey, secretKey) of `<rocketmq_home>/conf/tools.yml`, or None as mqadmin has it."""
    if not rocketmq_home:
        return None
    path = Path(rocketmq_home) / TOOLS_FILE
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        log.warning("cannot read %s (%s): requests are not signed with it", path, exc)
        return None
    if not isinstance(data, dict):
        return None
    access, secret = (_text(data.get(key)) for key in ("accessKey", "secretKey"))
    if not access.strip() or not secret.strip():
        return None
    return access, secret


def apply_mqadmin_credentials() -> None:
    """Make tools.yml's keys (else rmq's env/profile credentials) the clients' default."""
    keys = tools_keys(os.environ.get(ROCKETMQ_HOME_ENV))
    if keys is None:
        apply_credentials(None, None)
        return
    from rmq.client.credentials import SessionCredentials, use_default_credentials

    use_default_credentials(SessionCredentials(*keys))


def _text(value: object) -> str:
    """fastjson's JSONObject.getString of a YAML scalar: None is blank, numbers as written."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
