"""In-memory tools for the car rental project (no network)."""
from datetime import date

FLEET = {
    "Lisbon": {"economy": 4, "compact": 3, "suv": 2, "van": 1},
    "Porto": {"economy": 2, "compact": 2, "suv": 1, "van": 0},
    "Faro": {"economy": 5, "compact": 1, "suv": 0, "van": 1},
}
DAILY_RATE = {"economy": 35, "compact": 45, "suv": 70, "van": 90}
COVER_RATE = {"economy": 12, "compact": 14, "suv": 20, "van": 25}


def _days(pickup_date, return_date):
    try:
        start = date.fromisoformat(str(pickup_date)[:10])
        end = date.fromisoformat(str(return_date)[:10])
        return max((end - start).days, 1)
    except ValueError:
        return 1


def find_vehicles(city, pickup_date, return_date, vehicle_class):
    """List free cars of a class in a city for the given dates."""
    cls = str(vehicle_class).lower()
    count = FLEET.get(str(city).title(), {}).get(cls, 0)
    days = _days(pickup_date, return_date)
    vehicles = [{"id": f"{cls[:3].upper()}-{n + 1}", "class": cls} for n in range(count)]
    return {"count": count, "days": days, "daily_rate": DAILY_RATE.get(cls, 0), "vehicles": vehicles}


def reserve_vehicle(city, pickup_date, return_date, vehicle_class, driver_age, cover_price=0):
    """Reserve a car and return the reservation number."""
    cls = str(vehicle_class).lower()
    days = _days(pickup_date, return_date)
    total = days * DAILY_RATE.get(cls, 0) + float(cover_price or 0)
    if total == int(total):
        total = int(total)
    rid = "SR-" + str(city)[:3].upper() + "-" + str(pickup_date)[:10].replace("-", "")
    return {"reservation_id": rid, "total": total, "status": "confirmed"}


def price_cover(vehicle_class, days):
    """Price full cover insurance."""
    cls = str(vehicle_class).lower()
    return {"cover_price": COVER_RATE.get(cls, 15) * int(float(days)), "cover_name": "Full Cover Plus"}


def file_damage_report(reservation_id, description, estimated_cost):
    """File a damage report for a rental."""
    return {"claim_id": "CL-" + str(reservation_id)[-4:], "status": "filed"}
