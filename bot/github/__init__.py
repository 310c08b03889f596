"""The GitHub side: the REST adapter (the only PyGithub user), events, /bench, the sticky comment."""
