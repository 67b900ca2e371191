"""The retail banking example's invented seed data: customers, accounts, payees and cards."""

# Amounts are in pounds sterling (GBP). Account numbers are 8 digits, as in the UK.
USERS = [
    {
        "username": "Mary Brown",
        "segment": "premier",
        "email_address": "mary.brown@example.com",
        "physical_address": "14 Elmwood Road, Bristol, BS6 7QT",
    },
    {
        "username": "James Carter",
        "segment": "retail",
        "email_address": "j.carter@example.net",
        "physical_address": "Flat 3, 27 Quayside Court, Leeds, LS1 4BR",
    },
    {
        "username": "Aisha Khan",
        "segment": "student",
        "email_address": "aisha.khan@example.org",
        "physical_address": "9 Hawthorn Close, Coventry, CV4 8EP",
    },
]

ACCOUNTS = [
    {"username": "Mary Brown", "account_number": "40021873", "name": "Everyday Current",
     "account_type": "current", "balance": 2450.75},
    {"username": "Mary Brown", "account_number": "40021881", "name": "Rainy Day Savings",
     "account_type": "savings", "balance": 8120.00},
    {"username": "James Carter", "account_number": "40035517", "name": "Everyday Current",
     "account_type": "current", "balance": 312.40},
    {"username": "Aisha Khan", "account_number": "40049920", "name": "Student Current",
     "account_type": "current", "balance": 86.15},
    {"username": "Aisha Khan", "account_number": "40049938", "name": "Easy Access Saver",
     "account_type": "savings", "balance": 1500.00},
]

PAYEES = [
    {"username": "Mary Brown", "payee_name": "Olivia Grant", "account_number": "20394857",
     "payee_type": "person", "reference": "Rent share"},
    {"username": "Mary Brown", "payee_name": "Northgate Energy", "account_number": "55019283",
     "payee_type": "business", "reference": "Electricity bill"},
    {"username": "Mary Brown", "payee_name": "Samuel Okafor", "account_number": "71230944",
     "payee_type": "person", "reference": "Football club fees"},
    {"username": "James Carter", "payee_name": "Leeds Lettings Ltd", "account_number": "66103275",
     "payee_type": "business", "reference": "Flat 3 rent"},
]

# Only the last four digits of a card are stored. `status` is active, frozen or blocked.
CARDS = [
    {"username": "Mary Brown", "card_type": "debit", "last_four": "4821",
     "account_number": "40021873", "expiry": "09/27", "status": "active"},
    {"username": "Mary Brown", "card_type": "credit", "last_four": "7390",
     "account_number": None, "expiry": "03/28", "status": "active"},
    {"username": "James Carter", "card_type": "debit", "last_four": "1156",
     "account_number": "40035517", "expiry": "11/26", "status": "active"},
    {"username": "Aisha Khan", "card_type": "debit", "last_four": "6602",
     "account_number": "40049920", "expiry": "05/29", "status": "active"},
]
