def get_date(:
    return [
