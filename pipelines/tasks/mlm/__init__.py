"""The mlm task's home (see lfcli.pipelines.tasks)."""
