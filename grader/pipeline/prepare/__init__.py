"""Step 2: the job's folder, the job file and the probe program sent into the kernel.
"""
