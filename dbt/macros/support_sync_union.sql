{#
  support_sync_union(name, columns): the SELECT of a staging model — the support-sync relation `name` (a table
  or view of models/sources.yml) of every workspace, as one relation with a `workspace_id` column first.

  Which workspaces (docs/guides/workspaces.md, "The dbt union"):
  - var `support_sync_workspaces`, a mapping of workspace id → its schema (BigQuery: its dataset), the ids
    and schemas of the deployment's workspaces file: {acme: support_acme, globex: support_globex}. A schema
    in another database (BigQuery: project) is written `database.schema`. The UNION ALL of those relations,
    each row's workspace_id the id it is listed under.
  - otherwise the one schema of the source, var `support_sync_schema` (default `support`), its workspace_id
    `default` (the deployment's own workspace is `default`).
  A relation with a `workspace_id` column of its own (SYNC_WAREHOUSE_LAYOUT=shared-tables: one schema holds
  every workspace) keeps it: its rows know their workspace, whichever id the relation is listed under.

  The columns (dbt_utils.union_relations' rule, written here so that the package needs no other package):
  `columns` — the spec's, as [name, type] pairs — in their order, then every other column any workspace's
  relation has (custom-field columns of ticket_custom_fields, columns of a newer support-sync) sorted by name,
  so the order depends neither on the workspaces listed nor on their order. A relation without a column reads
  null there, cast to the type the column has where a relation has it (else the spec's). A workspace without
  the relation at all is left out, with a line in dbt's log; none with it is an error.
#}
{% macro support_sync_union(name, columns) %}
  {#- The source, always: it is the model's lineage, and its database and identifier. -#}
  {%- set src = source('support_sync', name) -%}
  {%- if not execute -%}{{ return('') }}{%- endif -%}

  {%- set workspaces = support_sync_workspaces(src) -%}
  {%- set spec_names = [] -%}
  {%- set spec_types = {} -%}
  {%- for c in columns -%}
    {%- do spec_names.append(c[0]) -%}
    {%- do spec_types.update({c[0]: support_sync_column_type(c[1])}) -%}
  {%- endfor -%}

  {%- set found = [] -%}
  {%- set seen_types = {} -%}
  {%- for ws in workspaces -%}
    {%- set relation = adapter.get_relation(database=ws.database, schema=ws.schema, identifier=src.identifier) -%}
    {%- if relation is none -%}
      {%- do log('support_sync: workspace ' ~ ws.id ~ ' has no ' ~ src.identifier ~ ' in ' ~ ws.schema ~ ': left out of the union', info=true) -%}
    {%- else -%}
      {%- set present = [] -%}
      {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- set column_name = column.name -%}
        {%- do present.append(column_name) -%}
        {%- if column_name not in seen_types -%}{%- do seen_types.update({column_name: column.data_type}) -%}{%- endif -%}
      {%- endfor -%}
      {%- do found.append({'id': ws.id, 'relation': relation, 'present': present}) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if found | length == 0 -%}
    {{ exceptions.raise_compiler_error('support_sync: no ' ~ src.identifier ~ ' in ' ~ (workspaces | map(attribute='schema') | join(', ')) ~ ' (support_sync_workspaces / support_sync_schema)') }}
  {%- endif -%}

  {%- set extra = [] -%}
  {%- for column_name in seen_types | sort -%}
    {%- if column_name not in spec_names and column_name != 'workspace_id' -%}{%- do extra.append(column_name) -%}{%- endif -%}
  {%- endfor -%}
  {%- set names = spec_names + extra -%}

  {%- for part in found %}
select
  {% if 'workspace_id' in part.present -%}
  cast({{ adapter.quote('workspace_id') }} as {{ dbt.type_string() }}) as {{ adapter.quote('workspace_id') }}
  {%- else -%}
  cast({{ dbt.string_literal(part.id) }} as {{ dbt.type_string() }}) as {{ adapter.quote('workspace_id') }}
  {%- endif -%}
  {%- for column_name in names %},
  {% if column_name in part.present -%}
  {{ adapter.quote(column_name) }}
  {%- else -%}
  cast(null as {{ seen_types.get(column_name) or spec_types[column_name] }}) as {{ adapter.quote(column_name) }}
  {%- endif -%}
  {%- endfor %}
from {{ part.relation }}
{% if not loop.last %}union all{% endif %}
  {%- endfor %}
{% endmacro %}

{#
  The workspaces a staging model reads: [{id, database, schema}], from var `support_sync_workspaces` (ids
  sorted) or, without it, the source's own schema as the workspace `default`.
#}
{% macro support_sync_workspaces(src) %}
  {%- set listed = var('support_sync_workspaces', none) -%}
  {%- if not listed -%}
    {{ return([{'id': 'default', 'database': src.database, 'schema': src.schema}]) }}
  {%- endif -%}
  {%- if listed is not mapping -%}
    {{ exceptions.raise_compiler_error('support_sync_workspaces must map workspace ids to schemas, e.g. {acme: support_acme}; got ' ~ listed) }}
  {%- endif -%}
  {%- set workspaces = [] -%}
  {%- for id in listed | sort -%}
    {%- if not modules.re.match('^[a-z][a-z0-9-]{0,39}$', id | string) -%}
      {{ exceptions.raise_compiler_error('support_sync_workspaces: ' ~ id ~ ' is no workspace id (lower-case letters, digits and -, starting with a letter, at most 40)') }}
    {%- endif -%}
    {%- set place = listed[id] | string -%}
    {%- set parts = place.rsplit('.', 1) -%}
    {%- if parts | length == 2 -%}
      {%- do workspaces.append({'id': id, 'database': parts[0], 'schema': parts[1]}) -%}
    {%- else -%}
      {%- do workspaces.append({'id': id, 'database': src.database, 'schema': place}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(workspaces) }}
{% endmacro %}
