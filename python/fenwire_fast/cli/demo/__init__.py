"""``fenwire demo``: many mock children supervised at once, their progress on one screen."""
