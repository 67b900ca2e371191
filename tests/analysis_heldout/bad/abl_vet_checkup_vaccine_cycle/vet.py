"""Willow Vet tools (stand-ins)."""


def pet_record(pet_name):
    return {"species": "dog", "age_years": 11, "boosters_due": True}


def book_checkup(pet_name, day):
    return {"vet": "Dr Hana Brook", "time": "10:15"}


def book_vaccination(pet_name, vaccine):
    return {"day": "Thursday", "time": "16:40"}
