"""Northfield University tools (stand-ins)."""


def register_visit(full_name, email, subject, open_day):
    return {"ticket": "OD-7731", "start_time": "11:00"}
