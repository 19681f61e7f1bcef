"""What sits in a user's tool chain: the ``ptxas`` drop-in, GCC's ``as`` shim,
shadow toolkits, and the pass pipeline they run."""
