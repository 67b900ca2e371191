"""A tool file with a Python syntax error."""


def get_date(:
    return "today"
