def book_upgrade(flight_no, cabin):
    return {"confirmation": "U-1"}
def seats(flight_no, cabin):
    return {"free": 2}
