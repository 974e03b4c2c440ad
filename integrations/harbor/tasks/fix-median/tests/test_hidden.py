import unittest

from stats import median


class HiddenMedianTest(unittest.TestCase):
    def test_single(self):
        self.assertEqual(median([7]), 7)

    def test_odd(self):
        self.assertEqual(median([5, 3, 9, 1, 7]), 5)

    def test_even(self):
        self.assertEqual(median([10, 2, 8, 4]), 6)

    def test_even_floats(self):
        self.assertAlmostEqual(median([1.5, 0.5]), 1.0)

    def test_input_untouched(self):
        values = [3, 1, 2, 4]
        median(values)
        self.assertEqual(values, [3, 1, 2, 4])


if __name__ == "__main__":
    unittest.main()
