"""The qa task's home (see lfcli.pipelines.tasks)."""
