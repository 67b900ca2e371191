"""Willow Vet tools (stand-ins)."""


def current_prescription(pet_name: str):
    """The pet's repeat prescription, if any."""
    return [
        {"status": "success", "msg": "found"},
        {"arg": "found", "value": True},
        {"arg": "medicine", "value": "Vetmedin 5 mg"},
        {"arg": "check_due", "value": False},
    ]


def order_refill(pet_name: str):
    """Order a refill from the pharmacy."""
    return [{"status": "success", "msg": "ordered"}, {"arg": "ready_day", "value": "Thursday after 2 pm"}]
