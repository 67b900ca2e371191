"""The bookstore example's invented seed data: the catalogue, genre aliases and reference titles."""

# Every book the store sells. `sales_rank` is store-wide (1 = best seller); `stock` is the
# number of copies on the shelf when the database is first created. Titles contain no commas,
# so a comma-separated list of titles can be split safely.
CATALOGUE = [
    # science fiction
    {"title": "The Glass Orbit", "author": "Mara Okonkwo", "genre": "science fiction",
     "price": 16.99, "sales_rank": 3, "stock": 12},
    {"title": "Salt Between Stars", "author": "Devin Hale", "genre": "science fiction",
     "price": 14.50, "sales_rank": 9, "stock": 7},
    {"title": "Quiet Machines", "author": "Ines Calloway", "genre": "science fiction",
     "price": 18.00, "sales_rank": 15, "stock": 0},
    {"title": "Harbor of Ninth Moons", "author": "Teodor Vance", "genre": "science fiction",
     "price": 12.99, "sales_rank": 21, "stock": 4},
    # mystery
    {"title": "The Lantern Room Murders", "author": "Grace Whitcombe", "genre": "mystery",
     "price": 13.99, "sales_rank": 1, "stock": 20},
    {"title": "A Ledger of Lies", "author": "Peter Anand", "genre": "mystery",
     "price": 11.50, "sales_rank": 8, "stock": 5},
    {"title": "Fog Over Kettle Lane", "author": "Hazel Moreau", "genre": "mystery",
     "price": 12.25, "sales_rank": 14, "stock": 9},
    {"title": "The Ninth Witness", "author": "Colin Ashdown", "genre": "mystery",
     "price": 15.00, "sales_rank": 24, "stock": 2},
    # fantasy
    {"title": "Crown of Ash and Ivy", "author": "Selene Marsh", "genre": "fantasy",
     "price": 19.99, "sales_rank": 2, "stock": 15},
    {"title": "The Cartographer's Daughter", "author": "Rowan Blake", "genre": "fantasy",
     "price": 17.50, "sales_rank": 6, "stock": 0},
    {"title": "Emberwild", "author": "Tamsin Reyes", "genre": "fantasy",
     "price": 14.99, "sales_rank": 12, "stock": 6},
    {"title": "Songs of the Drowned City", "author": "Ilya Petrov", "genre": "fantasy",
     "price": 16.25, "sales_rank": 19, "stock": 3},
    # romance
    {"title": "Letters to Larkspur", "author": "June Ellery", "genre": "romance",
     "price": 10.99, "sales_rank": 4, "stock": 18},
    {"title": "Second Spring in Avignon", "author": "Claire Dumont", "genre": "romance",
     "price": 12.99, "sales_rank": 11, "stock": 8},
    {"title": "The Baker Next Door", "author": "Nora Patel", "genre": "romance",
     "price": 9.99, "sales_rank": 16, "stock": 11},
    {"title": "Summer of Small Promises", "author": "Lila Brennan", "genre": "romance",
     "price": 11.25, "sales_rank": 22, "stock": 0},
    # history
    {"title": "Rivers of Empire", "author": "Samuel Oduya", "genre": "history",
     "price": 24.00, "sales_rank": 7, "stock": 5},
    {"title": "The Silk Ledger: Trade Routes of the Medieval World", "author": "Helena Strand",
     "genre": "history", "price": 22.50, "sales_rank": 13, "stock": 4},
    {"title": "Bread and Iron", "author": "Marcus Feld", "genre": "history",
     "price": 19.00, "sales_rank": 20, "stock": 6},
    {"title": "The Last Lighthouse Keepers", "author": "Agnes Corrie", "genre": "history",
     "price": 17.75, "sales_rank": 25, "stock": 2},
    # cooking
    {"title": "One Pan Weeknights", "author": "Rosa Lindqvist", "genre": "cooking",
     "price": 21.99, "sales_rank": 5, "stock": 14},
    {"title": "The Fermentation Shelf", "author": "Kenji Aramaki", "genre": "cooking",
     "price": 26.00, "sales_rank": 10, "stock": 3},
    {"title": "Soup for Every Season", "author": "Bea Hollins", "genre": "cooking",
     "price": 18.50, "sales_rank": 17, "stock": 7},
    {"title": "Small Kitchen Big Flavour", "author": "Omar Haddad", "genre": "cooking",
     "price": 19.50, "sales_rank": 23, "stock": 0},
    # popular science
    {"title": "The Hidden Life of Tides", "author": "Priya Raman", "genre": "science",
     "price": 18.99, "sales_rank": 18, "stock": 8},
    {"title": "Counting Sheep: The Science of Sleep", "author": "Elliot Grange",
     "genre": "science", "price": 15.99, "sales_rank": 26, "stock": 5},
]

# Ways customers name a genre, mapped to the catalogue's genre names.
GENRE_ALIASES = {
    "sci-fi": "science fiction",
    "scifi": "science fiction",
    "sf": "science fiction",
    "space opera": "science fiction",
    "crime": "mystery",
    "detective": "mystery",
    "thriller": "mystery",
    "whodunit": "mystery",
    "epic fantasy": "fantasy",
    "magic": "fantasy",
    "love story": "romance",
    "romantic": "romance",
    "historical": "history",
    "non-fiction history": "history",
    "cookbook": "cooking",
    "cookery": "cooking",
    "food": "cooking",
    "recipes": "cooking",
    "popular science": "science",
    "nature": "science",
}

# Well-known books the store does not stock, so that a customer's favourite book can still be
# mapped to a genre for recommendations.
REFERENCE_TITLES = {
    "dune": "science fiction",
    "the left hand of darkness": "science fiction",
    "foundation": "science fiction",
    "the hound of the baskervilles": "mystery",
    "murder on the orient express": "mystery",
    "the hobbit": "fantasy",
    "a wizard of earthsea": "fantasy",
    "pride and prejudice": "romance",
    "jane eyre": "romance",
    "the guns of august": "history",
    "a brief history of time": "science",
}
