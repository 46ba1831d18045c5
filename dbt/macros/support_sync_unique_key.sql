{#
  A key is unique: no two rows share the values of `columns` (rows with a null in the key are left out, as
  dbt's `unique` does; the staging models test the key's columns not null besides). The staging models' keys
  are the table's primary key after workspace_id, since the ids of different workspaces collide. Written here
  rather than taken from dbt_utils (unique_combination_of_columns): the package depends on no other package,
  so it installs without dbt hub.
#}
{% test support_sync_unique_key(model, columns) %}
{%- set key = [] -%}
{%- for c in columns -%}{%- do key.append(adapter.quote(c)) -%}{%- endfor %}
select {{ key | join(', ') }}, count(*) as rows_with_key
from {{ model }}
where {{ key | join(' is not null and ') }} is not null
group by {{ key | join(', ') }}
having count(*) > 1
{% endtest %}
