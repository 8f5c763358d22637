"""The Wireshark plugin for Taurus frames (UET PDS/SES, entropy header,
probe, SRC record, CSIG tags, INT trailer): ``taurus_uet.lua``, generated
from the wire spec by ``generate.py``; ``install`` copies it where
Wireshark and tshark load personal plugins."""
import os
import shutil

PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "taurus_uet.lua")


def personal_plugin_dir() -> str:
    """Wireshark's personal plugin folder on Linux/macOS (Help > About >
    Folders in Wireshark shows it)."""
    return os.path.join(os.path.expanduser("~"), ".local", "lib", "wireshark", "plugins")


def install(directory: str = "") -> str:
    """Copy the plugin into `directory` (default: the personal plugin
    folder); returns the installed file's path."""
    d = directory or personal_plugin_dir()
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, os.path.basename(PLUGIN))
    shutil.copyfile(PLUGIN, dst)
    return dst
