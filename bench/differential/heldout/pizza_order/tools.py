"""Tools for Luigi's Pizzeria. Results use the guide's slot_name/value format."""
import re

MENU = {"margherita": 9, "funghi": 10, "diavola": 11, "quattro formaggi": 12}
ZONES = {"10115": "A", "10117": "A", "10119": "B"}
DELIVERY_FEE = {"A": 0, "B": 2}
NUMBER_WORDS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def get_menu():
    """Return the pizzas on the menu with their prices in euros."""
    return [{"slot_name": "menu", "value": {name.title(): price for name, price in MENU.items()}}]


def _count(text, name):
    total = 0
    for m in re.finditer(re.escape(name), text):
        before = text[:m.start()].split()[-2:]
        qty = 1
        for tok in reversed(before):
            tok = tok.strip(",.;:'\"[(x")
            if tok.isdigit():
                qty = int(tok)
                break
            if tok in NUMBER_WORDS:
                qty = NUMBER_WORDS[tok]
                break
        total += qty
    return total


def price_order(items, discount=0, postcode=""):
    """Compute the order total in euros from the items text, the discount percentage and the postcode."""
    text = str(items or "").lower()
    subtotal = sum(_count(text, name) * price for name, price in MENU.items())
    if subtotal == 0:
        return {"error": "No pizzas from the menu found in the order."}
    try:
        pct = float(discount or 0)
    except (TypeError, ValueError):
        pct = 0.0
    zone = ZONES.get(str(postcode or "").strip(), "A")
    total = subtotal * (100 - pct) / 100 + DELIVERY_FEE[zone]
    return [{"slot_name": "total", "value": f"{total:.2f}"}]


def check_postcode(postcode=""):
    """Check that we deliver to this postcode and return its delivery zone."""
    code = re.sub(r"\D", "", str(postcode or ""))
    if code not in ZONES:
        return {"error": f"We do not deliver to {postcode}."}
    return [{"slot_name": "zone", "value": ZONES[code]}]


def place_order(items, address=""):
    """Place the order and return the order number and the estimated delivery time in minutes."""
    text = str(items or "").lower()
    n = sum(_count(text, name) for name in MENU)
    order_id = f"LP-{400 + n * 11}"
    return [{"slot_name": "order_id", "value": order_id},
            {"slot_name": "eta", "value": 30 + 5 * n}]
