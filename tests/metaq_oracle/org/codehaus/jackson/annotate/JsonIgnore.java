package org.codehaus.jackson.annotate;

/** Stand-in for jackson's annotation on cluster.Partition. */
@java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.RUNTIME)
public @interface JsonIgnore {
}
