"""The control plane: drive a running fake walsender or proxy over HTTP/JSON, from any
language (``spec/control.openapi.yaml``).

>>> from pgwire_spec.control import ControlClient
>>> ctl = ControlClient("http://127.0.0.1:8089")        # what --control printed
>>> ctl.add_fault({"action": "disconnect", "kind": "Commit", "after_messages": 3})
>>> ctl.wait_confirmed("0/1A2B3C8", timeout=10)
>>> ctl.connections()[0]["confirmed_lsn"]

The server side (:mod:`.server`, aiohttp) runs on the served process's event loop; the
client needs only the standard library.
"""

from .client import ControlClient, ControlClientError

__all__ = ["ControlClient", "ControlClientError"]
