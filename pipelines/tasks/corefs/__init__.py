"""The corefs task's home (see lfcli.pipelines.tasks)."""
