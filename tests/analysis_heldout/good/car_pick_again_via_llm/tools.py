"""Roadstar Car Rental tools (stand-ins)."""


def list_cars(branch: str):
    """The cars free today at a branch."""
    return [{"status": "success", "msg": "C-114 Fiat 500 manual 4 seats 32 EUR; C-207 Skoda Octavia auto 5 seats 49 EUR"}]


def hold_car(car_id: str):
    """Hold a car for the renter until the end of the day."""
    return [
        {"status": "success", "msg": "held"},
        {"arg": "held", "value": True},
        {"arg": "until", "value": "20:00"},
    ]
