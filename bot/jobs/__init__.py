"""The workflow's jobs above the measure job: the gate (plan) and the report."""
