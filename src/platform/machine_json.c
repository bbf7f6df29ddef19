/* The machine's facts as JSON members, the same on every platform.
 * Owns: the names of those members. Never: reads the machine (darwin.c, linux.c do). */
#include "platform.h"

#include "../data/json.h"

const char *machine_kind(const struct machine *m)
{
    return m->guest == 1 ? "guest" : m->guest == 0 ? "host" : "unknown";
}

void machine_json(struct json *j, const struct machine *m)
{
    json_str(j, "os", m->os);
    json_str(j, "os_version", m->os_version);
    json_str(j, "os_build", m->os_build[0] ? m->os_build : NULL);
    json_str(j, "hw_model", m->model[0] ? m->model : NULL);
    json_str(j, "cpu_brand", m->brand[0] ? m->brand : NULL);
    json_int(j, "vcpus", m->ncpu);
    json_int(j, "memory_bytes", (long long)m->memory);
    json_str(j, "machine", machine_kind(m));
}
