"""Order pricing."""


def line_total(unit_price, quantity):
    return unit_price * quantity


def order_total(lines, discount=0.0):
    """Sum of all lines, minus a fractional discount (0.1 = 10 %)."""
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return round(subtotal * (1 + discount), 2)
