"""Things drawn for a person: HTML pages of the tasks' output over their documents, and
training curves. Above pipelines.io (it reads outputs and documents), below infer and train."""
