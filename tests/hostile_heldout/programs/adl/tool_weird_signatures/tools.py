import functools

def a(*args, **kwargs):
    return []

def b(x, /, y, *, z=lambda q: q):
    return []

async def c(x):
    return []

@functools.lru_cache
def d(x: 'list[dict[str, ' = None):
    return []

e = lambda: []

class f:
    def __call__(self):
        return []
