"""Apps on the Taurus transport: the shared-memory client (client.py)."""
from .client import Conn, Endpoint, WouldBlock, connect, listen

__all__ = ["Conn", "Endpoint", "WouldBlock", "connect", "listen"]
