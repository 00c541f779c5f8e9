"""Step 5: verdicts from the facts: ``items`` judges an item against its references,
``notebook`` the whole notebook, naming what stopped the items not reached, and
``broken_cells`` names a cell that does not compile in the verdicts of what it defines.
"""
