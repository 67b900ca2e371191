"""The support hub's bank: one checking account and one credit card, enough to chat with the example."""

CHECKING = 1250.0
CARD_BALANCE = 430.0


def get_balance() -> dict:
    """Read the balance of the customer's checking account."""
    return {"balance": CHECKING, "currency": "EUR"}


def pay_card(amount: float) -> dict:
    """Pay an amount on the customer's credit card from their checking account."""
    amount = float(amount)
    if amount <= 0 or amount > CHECKING:
        raise ValueError(f"cannot pay {amount} EUR")
    return {"confirmation": "P-" + str(int(amount * 100)), "new_card_balance": round(CARD_BALANCE - amount, 2)}
