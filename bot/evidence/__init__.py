"""Fix evidence: what the harness has shown about a change — the report reproduced, each criterion, no weakened test."""
