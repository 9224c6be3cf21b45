#include "launcher/job_spec.h"
