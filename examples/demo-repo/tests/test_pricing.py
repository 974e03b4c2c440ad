import unittest

from inventory.pricing import line_total, order_total


class PricingTest(unittest.TestCase):
    def test_line_total(self):
        self.assertEqual(line_total(2.5, 4), 10.0)

    def test_order_total_with_discount(self):
        self.assertEqual(order_total([(10.0, 2), (5.0, 1)], discount=0.1), 22.5)


if __name__ == "__main__":
    unittest.main()
