"""Corvid Systems IT tools (stand-ins)."""


def verify_employee(employee_id: str, badge_digits: str):
    """Check the badge digits of an employee."""
    return [{"status": "success", "msg": "verified"}]


def unlock_account(employee_id: str):
    """Unlock the employee's directory account."""
    return [{"status": "success", "msg": "unlocked"}]


def reset_password(employee_id: str):
    """Text a password reset link to the employee's phone."""
    return [{"status": "success", "msg": "link sent"}]
