"""Process entry points run by spark-submit (the files under spark_apps/ call these)."""
