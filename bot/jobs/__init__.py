"""The workflow's jobs above the measure job: the gate (plan) and the report, each given a
``bot.forge.client.ForgeClient`` and plain values."""
