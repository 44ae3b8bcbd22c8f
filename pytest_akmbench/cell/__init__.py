"""One cell (task, arm, seed): run dir and run (``runner``), prompts, verifiers, the akm CLI
(``akm``) and the shell reader (``shell``) behind the trajectory (``trajectory``), and corpus
validation, which runs the oracle and nop through the same path (``validate``)."""
