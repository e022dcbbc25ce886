"""Tools that run the library: they read what a stack would create and judge it. The library never imports them."""
