"""What grading produces: the report, the gradebook and its shards, the class report,
the students' feedback pages, and the platforms' formats.
"""
