"""Roadstar Car Rental tools (stand-ins)."""


def cars_available(branch: str, car_class: str, pickup_date: str):
    """How many cars of a class a branch has free on a day, and the day price."""
    return [
        {"status": "success", "msg": "counted"},
        {"arg": "count", "value": 0},
        {"arg": "price", "value": 39},
    ]


def nearest_branch(branch: str):
    """The nearest other branch to a branch."""
    return [{"status": "success", "msg": "found"}, {"arg": "branch", "value": "Airport Terminal 2"}]
