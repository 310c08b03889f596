"""Where the processes that run a pull request's code are confined: a namespace sandbox that
lets them write only their scratch folders, and a cgroup per process tree that caps its memory
and kills it whole."""
