"""Apps on the Taurus transport: the shared-memory client (client.py)."""
from .client import Conn, Duplex, Endpoint, WouldBlock, connect, listen

__all__ = ["Conn", "Duplex", "Endpoint", "WouldBlock", "connect", "listen"]
