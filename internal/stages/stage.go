package stages
