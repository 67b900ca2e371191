"""Pageleaf Books tools (stand-ins)."""


def find_title():
    """Find the title named in the user's last message."""
    return [{"status": "success", "msg": "ok"}, {"arg": "found", "value": True}, {"arg": "title", "value": "Emberwild"}]


def hold_title():
    """Put the found book aside."""
    return [{"status": "success", "msg": "held"}]
