"""The forge-neutral side of the conversation: what the jobs ask a forge (``client.py``), the
plain data it answers with (``types.py``), and the text the bot reads and writes in comments,
whatever the forge: ``/bench`` (``slash.py``), hidden state (``hidden.py``), the one sticky
review comment (``sticky.py``). A forge's own package (``bot/github/``) implements the client
and reads its events; nothing here imports one."""
