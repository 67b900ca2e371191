def get_date():
    """Today's date."""
    return [{"status": "success", "msg": "ok"}, {"arg": "today", "value": "2025-01-01"}]
